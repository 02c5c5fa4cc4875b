import sys
print("hello from", sys.argv[0])
