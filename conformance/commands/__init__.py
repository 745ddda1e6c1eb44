"""The `eventtime` subcommands, one module each: `add_parser(sub)` declares the command and its options
(those several commands take come from `options`), `run(args) -> int` does it and returns an `ExitCode`.
`eventtime.cli` lists them in one table; the signal handling and the opening of a run's Spark session
are in `spark`, running a plan of (scenario, implementation) pairs is in `execute`."""
