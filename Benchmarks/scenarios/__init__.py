"""One module per benchmark scenario; each has run(ctx) -> list[Row]."""
