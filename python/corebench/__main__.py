from corebench.cli import console

console()
