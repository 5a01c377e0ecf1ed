"""Mixed stacks: the seeds' real backends behind the ports give the memory stack's answers."""
