"""Byte-level automata: code point sets, regex derivatives over UTF-8 bytes, DFAs."""
