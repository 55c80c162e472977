"""``auto``: detect each message's vendor format and run that format's parser."""
