"""Serving the app without UI code: the model allow-list and cache, stop flags, the race."""
