"""Packaging: the checkout and the installed wheel each work on their own."""
