"""The benches of `make bench` and what they share. Flat on purpose: each
bench is a command, `python -m bench.<name>` (`__main__`: the relay, `processes`,
`request_path`, `load`, `expensive_input`, `browser`, `rendering`, `pages`,
`short_cjk`, `data`, `tour`, `screenshots`, `floor`), beside its own parts named
after it (`browser_*`, `load_report`, `expensive_input_report`, `attackers`,
`hostile_inputs`) and the shared ones (`common`, `site`, `procfs`, `relay`,
`api`)."""
