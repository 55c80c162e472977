"""`make chaos`: the whole pipeline as real processes under SIGKILLs and a broker restart (``run``)."""
