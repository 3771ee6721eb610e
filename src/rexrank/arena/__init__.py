"""The Arena: readers vote between two anonymised reports of one study; the votes rank the models and hold every
metric against what readers chose (issue 48). `votes`: the record, its keyed voter and its way to the Hub;
`ranking`: Bradley–Terry ratings with bootstrap intervals, rank ranges and position bias; `limits`: what the ranking
counts of a voter, and the voters listed for the maintainers; `agreement`: each metric against the votes; `pairs`:
which pair a reader sees next and whether a vote may be cast (the Space's tab draws what these return)."""
