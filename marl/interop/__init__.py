"""Adapters to and from peer libraries (JaxMARL), both ways."""
