"""Pure learning code without I/O: text features, topic models, restrictive and meta methods."""
