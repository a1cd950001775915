"""Everything a stranger can send is hostile: the site's defences, end to end.

The URL walks read the whole URLconf (urlconf.py), so pages added later are
covered without touching these tests; public pages are listed in
PUBLIC_URL_NAMES.
"""
