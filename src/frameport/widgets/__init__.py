"""Notebook widgets (ipywidgets): sign in, preview a file, browse a bucket, page through a table.

Every widget fetches what it shows through the authenticated client (never a URL the browser
would have to authenticate), keeps no secret in its state, and also renders as text and HTML
where ipywidgets cannot (a saved notebook on a web page, an editor without the extension)::

    form = fp.widgets.login(endpoint="http://127.0.0.1:8080/v1", project="demo")
    fp.widgets.preview(form.client.bucket("photos"), "cat")
    fp.widgets.gallery(form.client.bucket("photos"), page_size=24)
    fp.widgets.table(form.client.table("crm", "people").sort("age"))
    fp.widgets.live_table(form.client.table("crm", "people").where(fp.col("age") > 30))
"""

from ._gallery import Gallery, gallery
from ._live_table import LiveTableView, live_table
from ._login import LoginForm, login
from ._preview import FilePreview, preview
from ._table import TablePreview, table

__all__ = [
    "FilePreview",
    "Gallery",
    "LiveTableView",
    "LoginForm",
    "TablePreview",
    "gallery",
    "live_table",
    "login",
    "preview",
    "table",
]
