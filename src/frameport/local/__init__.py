"""frameport's local service: a real implementation of the service's REST subset.

It runs on Starlette/uvicorn with SQLite and files on disk, enforces authentication,
permissions, query validation and the upload rules, and is the server every test talks to.

>>> from frameport.local import LocalService
>>> with LocalService() as svc:
...     print(svc.endpoint, svc.project)  # doctest: +SKIP
"""

from ._faults import InjectedFault
from ._server import LocalService

__all__ = ["InjectedFault", "LocalService"]
