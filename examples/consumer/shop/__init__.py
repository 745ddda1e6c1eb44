"""A small shop's streaming jobs: clicks per page and country, and user sessions."""
