"""A Delta Lake table kept equal to a table query's rows (``TableQuery.sync``). The ``delta``
extra is imported only here, and this package only inside ``TableQuery.sync``."""
