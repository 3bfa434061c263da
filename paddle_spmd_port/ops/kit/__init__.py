"""Generic pieces the op families share (no op named here): what a rule sees of an input
(:mod:`.tensor`), the shared checks and the rule declaration (:mod:`.checks`), the proposed
profile's shared helpers (:mod:`.proposed`)."""
