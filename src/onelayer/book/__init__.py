"""What only the book needs: notebook setup and glue, figure style, exercise checkers and
the interactive panels. Parts and chapter experiments never import from here."""
