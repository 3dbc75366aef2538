"""Turn chat histories and documents into a knowledge base you can ask, with every answer cited."""
