module example.com/upward

go 1.22
