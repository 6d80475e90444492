"""Reading a solution back (Problem + Solution -> Plan): which pools, placements, holdings and
costs the solver's values describe. It reads; it does not search, so it imports no solver.

decode.py builds the Plan; allot.py is the rule that says which nodes each placement holds.
"""
