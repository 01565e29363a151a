"""Work decomposition: windows of pairs, their cost, and how they are sized."""
