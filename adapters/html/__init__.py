"""Reading a page: bytes to the text a reader sees, the page's own CSS, its refresh, and the walls in front of it."""
