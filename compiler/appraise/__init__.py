"""What the report prices beside the plan (Problem + Plan): the next-best options of each
workload priced alone (alternatives.py), and why each owned on-prem node the plan leaves idle
stays idle (idle.py). Pricing for people, not for the search: it imports no solver.
"""
