"""Reads of the billing resources: querysets shaped for their Out serializers, and row-to-engine adapters."""
