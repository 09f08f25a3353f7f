"""Notebook widgets (ipywidgets): sign in, preview a file, browse a bucket, page through a table.

Every widget fetches what it shows through the authenticated client (never a URL the browser
would have to authenticate), keeps no secret in its state, and also renders as text and HTML
where ipywidgets cannot (a saved notebook on a web page, an editor without the extension)::

    form = fp.widgets.login(endpoint="http://127.0.0.1:8080/v1", project="demo")
    fp.widgets.preview(form.client.bucket("photos"), "cat")
    fp.widgets.gallery(form.client.bucket("photos"), page_size=24)
    fp.widgets.table(form.client.table("crm", "people").sort("age"))
"""

from ._gallery import Gallery, gallery
from ._login import LoginForm, login
from ._preview import FilePreview, preview
from ._table import TablePreview, table

__all__ = [
    "FilePreview",
    "Gallery",
    "LoginForm",
    "TablePreview",
    "gallery",
    "login",
    "preview",
    "table",
]
