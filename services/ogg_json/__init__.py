"""Oracle GoldenGate for Big Data operation-modeled JSON (format id ``ogg-json``)."""
