"""Front ends: user text (regex, later JSON Schema, Lark, Python types) -> IR. Every message
the user reads about their constraint text is written here."""
