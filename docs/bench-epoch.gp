set terminal pngcairo size 1000,560 font 'sans,10'
set output 'docs/bench-epoch.png'
set title 'clairfs bench epoch: 2000 files, 4 readers, 0.0 ms work/sample, PFS emulator 2 ms/open, 200 MB/s'
set xlabel 'epoch'
set ylabel 'epoch time (s)'
set logscale y
set key outside right
set xtics 1
set grid
plot 'docs/bench-epoch.dat' using 1:2 with linespoints lc rgb '#000000' dt 3 title columnheader(2), \
     'docs/bench-epoch.dat' using 1:3 with linespoints lc rgb '#1b9e77' dt 2 title columnheader(3), \
     'docs/bench-epoch.dat' using 1:4 with linespoints lc rgb '#d95f02' dt 2 title columnheader(4), \
     'docs/bench-epoch.dat' using 1:5 with linespoints lc rgb '#7570b3' dt 2 title columnheader(5), \
     'docs/bench-epoch.dat' using 1:6 with linespoints lc rgb '#e7298a' dt 2 title columnheader(6), \
     'docs/bench-epoch.dat' using 1:7 with linespoints lc rgb '#1b9e77' dt 1 title columnheader(7), \
     'docs/bench-epoch.dat' using 1:8 with linespoints lc rgb '#d95f02' dt 1 title columnheader(8), \
     'docs/bench-epoch.dat' using 1:9 with linespoints lc rgb '#7570b3' dt 1 title columnheader(9), \
     'docs/bench-epoch.dat' using 1:10 with linespoints lc rgb '#e7298a' dt 1 title columnheader(10), \
     'docs/bench-epoch.dat' using 1:11 with linespoints lc rgb '#1b9e77' dt 4 title columnheader(11), \
     'docs/bench-epoch.dat' using 1:12 with linespoints lc rgb '#d95f02' dt 4 title columnheader(12), \
     'docs/bench-epoch.dat' using 1:13 with linespoints lc rgb '#7570b3' dt 4 title columnheader(13), \
     'docs/bench-epoch.dat' using 1:14 with linespoints lc rgb '#e7298a' dt 4 title columnheader(14), \
     'docs/bench-epoch.dat' using 1:15 with linespoints lc rgb '#777777' dt 3 title columnheader(15)
