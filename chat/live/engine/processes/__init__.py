"""What spans processes: the one channel layer (`layer`), answers seen from
and asked of other processes (`fanout`, `remote`), whether an answer's owner
is alive (`liveness`), and this process's end under Daphne
(`daphne_shutdown`)."""
