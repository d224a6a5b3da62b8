from g6.cli import main

main()
