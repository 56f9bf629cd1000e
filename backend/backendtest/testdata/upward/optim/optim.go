// Package optim is a fixture: the layer above model.
package optim

import _ "example.com/upward/model"
