"""Request (`<Thing><Action>In`) and response (`<Thing>Out`) shapes of the billing endpoints."""
