"""The billing endpoints: parse, call one service or selector, render."""
