"""Tests of the project as a whole: the layers' imports, the docs, what each command loads,
the declared schemas, and audit findings that cross layers."""
