"""Web faces of gridbench: the static trace viewer and human play in the browser.

Both are plain files shipped inside this package (``templates/``, ``static/``): no build step,
no network, no JavaScript framework. Model output reaches a page only as JSON data and is put
on screen with ``textContent``, so a reply is always shown as text and never becomes markup.
"""
