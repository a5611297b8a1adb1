"""The `vramscope stream` protocol: what a remote vramscope writes to its
stdout (and reads from its stdin) when a monitor watches it over ssh.

``protocol`` holds the framing and the message vocabulary, ``codec`` turns
frames into JSON-ready dicts and back. No Qt, no sockets: the bytes travel
over the user's own ssh.
"""
