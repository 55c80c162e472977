# py4j ships no types: the parts binlake uses.
