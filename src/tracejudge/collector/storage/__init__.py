"""Storage: the disk queue and what keeps accepted data across a restart.

The SQLite inbox/outbox, the durability modes, replaying the queue at start, what
``tracejudge queue`` does to a queue, the volume headroom and the one way the collector
creates files.
"""
