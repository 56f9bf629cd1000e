module example.com/darwinfixture

go 1.26
