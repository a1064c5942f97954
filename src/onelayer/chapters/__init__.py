"""One module per chapter with that chapter's experiments, built from the parts in
``onelayer``; the book's notebooks import them. Nothing in the parts imports from here."""
