from g6.console import main

main()
