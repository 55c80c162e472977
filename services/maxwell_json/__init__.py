"""Zendesk Maxwell's JSON row/DDL messages (format id ``maxwell-json``)."""
