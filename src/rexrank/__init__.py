"""rexrank: the ReXrank benchmark for AI-generated chest X-ray reports."""

__version__ = "0.1.0"
