import abxgreet
print(abxgreet.greet("venv"))
