"""What every vendor parser shares: errors, context, decoding, types, row building.

A vendor parser (``services/<format>/parser.py``) is a pure function
``parse(raw: bytes, ctx: ParseContext) -> Parsed`` that raises ``RejectError``
for a message it cannot normalize. It does no I/O. ``shared.parsing.registry``
maps format ids to parsers, imported lazily, and wraps them so that nothing a
message contains can make a parser raise.
"""
