"""The dashboard's views: one module per screen, each a few typed function views."""
