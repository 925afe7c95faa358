"""How long a test waits for another process, thread or page before it calls it a runaway.

A loaded CI machine is slow, not wrong (the suite once took 36 minutes under load): every
wait for something to start or make progress uses these, never a tight deadline.
"""

#: Seconds.
RUNAWAY_S = 300.0
#: The same in milliseconds, for Playwright's waits.
RUNAWAY_MS = int(RUNAWAY_S * 1000)
