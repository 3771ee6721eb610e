"""The leaderboard backend: jobs the maintainers run on the results repo (aggregate; review and the gated
private scoring to come), and the checks every submission passes before anything reads it."""
