"""The server under hostile traffic: overload and SIGTERM (`bench load`), misbehaving
sessions and a leak check (`bench soak`)."""
