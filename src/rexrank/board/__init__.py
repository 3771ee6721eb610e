"""The leaderboard, in one package: what its tables hold (`schema`), how the aggregate job builds and ranks them
(`aggregate`), where a reader gets them (`sources`: a results repo or the embedded demo), how they are shaped for
display (`views`), and the Gradio app that shows them (`app`, the Space; needs `rexrank[space]`)."""
