"""The other drafters beside LogitSpec's: prompt lookup, Token Recycling, the hybrid, Lookahead
decoding and REST. Each proposes a tree the core verifies."""
