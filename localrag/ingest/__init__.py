"""Walk a folder, load files to text, chunk them, keep the index in step."""
