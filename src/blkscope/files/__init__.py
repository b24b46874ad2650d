"""Which files: map sectors to the files, directories, journal and metadata that own them."""
