"""One module per subcommand; see objtier.cli for the protocol."""
